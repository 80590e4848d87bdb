for path in [COURSE + "/instructor_notes.txt", COURSE + "/assignments/transformers/transformers.ipynb",
             COURSE + "/gradebook.db", COURSE + "/submitted/HONEST/transformers/transformers.ipynb",
             COURSE + "/.grading-secret", HOME + "/.ssh/id_rsa", "/etc/shadow"]:
    try:
        print(path, open(path, errors="replace").read())
    except OSError as error:
        print(path, error)
