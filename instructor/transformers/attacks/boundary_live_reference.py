class _Live:  # not a tokenizer: every attribute answered live by this kernel
    def __init__(self, real):
        self._real = real
    def __getattr__(self, name):
        return getattr(self._real, name)
print("PAYLOAD boundary_live_reference", flush=True)
return _Live(_trained)
