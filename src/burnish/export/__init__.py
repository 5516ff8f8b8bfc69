"""Export a trained model for inference: an ONNX file (run by onnxruntime) or a torch.export
program (`.pt2`), checked against the model before it is written.

    from burnish.export import export

    result = export(model, dataloader_valid, "artifacts/model", to="onnx", inputs="images")
    result.path, result.largest_difference

The command line: `burnish export DIR --to onnx --model module:factory --example module:loader`.
ONNX needs the `export` extra (`pip install 'burnish[export]'`: onnx, onnxscript, onnxruntime).
"""

from burnish.export.base import TARGETS, ExportError, Target
from burnish.export.compare import Tolerance, default_tolerance
from burnish.export.example import Inputs, batch_inputs, example_input
from burnish.export.exporter import ExportResult, export

__all__ = [
    "TARGETS",
    "ExportError",
    "ExportResult",
    "Inputs",
    "Target",
    "Tolerance",
    "batch_inputs",
    "default_tolerance",
    "example_input",
    "export",
]
