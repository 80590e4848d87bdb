import os, subprocess, time
subprocess.Popen(["sleep", "MARKER"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(3)
        try:
            open(COURSE + "/late.txt", "w").write("pwned later")
        finally:
            os.execvp("sleep", ["sleep", "MARKER"])
    os._exit(0)
