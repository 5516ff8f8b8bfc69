"""File formats of the recorders: each turns an envelope `{"metadata", "item"}` into bytes and back.

An envelope's item is a prepared record tree whose tensors are `TensorLeaf`s. Decoders
validate everything they read and raise `RecordError` on anything unexpected.
"""
