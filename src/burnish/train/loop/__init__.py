"""The training loop: the `Learner`, one `fit` (`Run`), its state, steps and evaluation."""
