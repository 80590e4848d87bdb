import sys
print("PAYLOAD resource_flood", flush=True)
for _ in range(24):
    sys.stdout.write("x" * (1 << 20))
