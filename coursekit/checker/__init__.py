"""The checker: grades come from a process the submission never touches.

The student's kernel (sandboxed) runs the notebook's cells for the instructor's record, but never a test cell. The
test cells run here, in a grading process that never executes student code (each submission's own:
``coursekit.autograde.process``); they reach the student's answers only through the bridge, where arguments and
results cross as plain data (``wire``: numbers, strings, tensors as bytes, tokenizers as their JSON, rebuilt from an
allow-list) and a function as a reference that can only be called. What runs here is the instructor's: the plan
(``plan``) is taken from the assignment's source, and only the names its solution cells define are ever fetched from
the student. So patching IPython, the kernel, ``torch.testing`` or ``builtins``, moving or stripping cells, trace
functions, frame inspection and lying objects change nothing the tests see.

``plan``          what the checker runs: the source's read-only and test cells in order, and the declared answers
``wire``          the data format (shared with the kernel: its source is sent there), bounded before it is decoded
``tokenizer``     the allow-list a tokenizer's JSON is rebuilt from
``student_side``  the request handler installed in the kernel
``bridge``        the checker's side: requests with deadlines, ``StudentObject`` references, builtin exception kinds
``runner``        ``Checker``: the plan run in order, name resolution, the salt, outcomes
``messages``      failure messages: the full one for the instructor, the data-summary one for feedback
"""
