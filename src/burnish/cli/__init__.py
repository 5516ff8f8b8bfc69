"""The `burnish` command line: look at runs and records without writing code.

    burnish summary DIR [DIR ...]         # the LearnerSummary of a run; several side by side
    burnish report DIR [DIR ...] [-o FILE]  # one self-contained HTML page: a run, or a comparison
    burnish inspect FILE                  # a record's metadata, tensors and model summary
    burnish convert IN OUT --to FORMAT    # re-save a record in another format or precision
    burnish export DIR --to onnx --model M:F --example M:L  # the trained model, ONNX/torch.export

Also `python -m burnish ...`. Bad input gives one line on stderr and exit status 1.
"""

from burnish.cli.main import main

__all__ = ["main"]
