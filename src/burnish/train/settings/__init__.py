"""The settings of a training run, declared once: `LearnerOptions` (options.py) is made of the
frozen groups of this package, and `TrainingBuilder`'s setters (the `*Setters` classes here)
each replace one field of one group. `build` resolves what depends on several settings
(resolve.py) and hands the options over as they are."""
