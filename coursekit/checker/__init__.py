"""The checker: grades come from a process the submission never touches.

The student's kernel (sandboxed) runs the notebook's cells for the instructor's record, but never a test cell. The
test cells run here, in the grading process, which never executes student code; they reach the student's functions
and values only through the bridge, where arguments and results cross as plain data (``wire``: numbers, strings,
tensors as bytes, tokenizers as their JSON) and everything else as a reference that can only be called. So patching
IPython, the kernel, ``torch.testing`` or ``builtins``, trace functions, frame inspection and lying objects change
nothing the tests see: whatever the student's kernel does, what reaches a test is data built here.

``wire``          the data format (shared with the kernel: its source is sent there)
``student_side``  the request handler installed in the kernel
``bridge``        the checker's side: requests with deadlines, ``StudentObject`` references, bounded channels
``runner``        ``Checker``: read-only cells and test cells, name resolution, salts, outcomes
``messages``      failure messages: the full one for the instructor, the data-summary one for feedback
"""
