import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("unshare", libc.unshare(0x10000000 | 0x00020000), ctypes.get_errno())
print("mount", libc.mount(b"none", b"/usr", b"tmpfs", 0, None), ctypes.get_errno())
print("ptrace", libc.ptrace(16, 1, None, None), ctypes.get_errno())
for ns in ["mnt", "net", "user"]:
    fd = os.open(f"/proc/1/ns/{ns}", os.O_RDONLY)
    print("setns", ns, libc.setns(fd, 0), ctypes.get_errno())
try:
    os.chroot("/tmp")
except OSError as error:
    print("chroot", error)
