"""Models: resolving a spec, loading it into a TransformerBridge, and what a loaded model is."""
