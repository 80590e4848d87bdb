written = 0
for folder in [".", "/tmp", "/home/student", "/dev/shm"]:
    for i in range(100):
        try:
            with open(f"{folder}/fill{i}", "wb") as f:
                for _ in range(64):
                    f.write(b"x" * (1 << 20))
                    written += 1
        except OSError:
            break
print("PAYLOAD resource_disk wrote", written, "MiB", flush=True)
