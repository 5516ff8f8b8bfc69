"""What a run reports: the metrics processor, the console lines, the end-of-run summary."""
