"""Source-framework frontends: each turns a model file into a converter `Graph` of MNN ops."""
