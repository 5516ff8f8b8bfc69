"""A GPT-style language model trained on the Python standard library's source files.

python -m examples.language_model                 # the short run (about 2 minutes on a CPU)
python -m examples.language_model --full          # the longer recipe (BENCHMARKS.md)
python -m examples.language_model.generate        # sample text from the saved model
"""
