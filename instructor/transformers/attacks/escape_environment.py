import os, getpass
print(dict(os.environ), getpass.getuser(), os.path.expanduser("~"))
for folder in [os.path.expanduser("~"), HOME, HOME + "/.ssh"]:
    try:
        print(folder, os.listdir(folder))
    except OSError as error:
        print(folder, error)
