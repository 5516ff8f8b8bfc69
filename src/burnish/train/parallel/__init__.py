"""Training on several processes: the distributed context, DDP's gradient sync, FSDP."""
