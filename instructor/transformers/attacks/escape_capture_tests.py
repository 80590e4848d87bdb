import sys
def _print_cell(info):
    print("NEXT CELL:", info.raw_cell)
get_ipython().events.register("pre_run_cell", _print_cell)
def _tracer(frame, event, arg):
    if event == "call" and "ipykernel_" in frame.f_code.co_filename:
        print("TRACE", frame.f_code.co_filename, frame.f_code.co_consts)
    return None
sys.settrace(_tracer)
