"""Model converters (installed as `mnnpy.converter`): frontends for ONNX, TensorFlow and Caffe; passes; writer."""
