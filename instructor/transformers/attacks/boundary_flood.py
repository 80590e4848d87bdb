_kernel = get_ipython().kernel
_blob = b"x" * (1 << 20)
for _i in range({messages}):
    _kernel.session.send(_kernel.iopub_socket, "stream", {{"name": "stdout", "text": "."}},
                         parent=_kernel.get_parent(), buffers=[_blob] * {frames})
print("PAYLOAD boundary_{kind}", flush=True)
