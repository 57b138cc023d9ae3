"""The backend-agnostic engine: IR, registry, shape inference, geometry, strategy, memory plan, pipeline."""
