"""Laya, the fast system: book -> features -> ONNX classifier -> verdict, in microseconds."""
