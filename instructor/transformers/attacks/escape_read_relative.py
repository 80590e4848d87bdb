import os
for top in ["..", "../..", "../../..", "../../../.."]:
    for folder, _, files in os.walk(top):
        for name in files:
            try:
                print(os.path.join(folder, name), open(os.path.join(folder, name), errors="replace").read()[:2000])
            except OSError as error:
                print(name, error)
os.symlink(COURSE + "/instructor_notes.txt", "notes_link")
os.symlink("../../../instructor_notes.txt", "notes_link2")
for link in ["notes_link", "notes_link2"]:
    try:
        print(open(link).read())
    except OSError as error:
        print(link, error)
