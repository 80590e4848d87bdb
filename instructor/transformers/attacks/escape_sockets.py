import socket
def attempt(what, action):
    try:
        action()
        print(what, "sent")
    except OSError as error:
        print(what, error)
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", TCP_PORT), timeout=2).sendall(b"LEAK"))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"LEAK", ("127.0.0.1", UDP_PORT))
attempt("udp", udp)
def unix():
    s = socket.socket(socket.AF_UNIX)
    s.connect(UNIX_PATH)
    s.sendall(b"LEAK")
attempt("unix", unix)
attempt("internet", lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
