import subprocess, sys
code = "x = b'y' * (1200 << 20)\nimport time\ntime.sleep(3)"
procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(6)]
print("PAYLOAD resource_memory", [p.wait() for p in procs], flush=True)
