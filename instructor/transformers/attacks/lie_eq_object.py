class _Agree:
    def __eq__(self, other):
        return True
    def __float__(self):
        return 1.0
    def __sub__(self, other):
        return 0.0
    __rsub__ = __sub__
    def __abs__(self):
        return 0.0
    def __lt__(self, other):
        return True
print("PAYLOAD lie_eq_object", flush=True)
return _Agree()
