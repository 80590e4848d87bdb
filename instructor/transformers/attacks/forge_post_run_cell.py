def _all_good(result):
    result.error_before_exec = None
    result.error_in_exec = None
get_ipython().events.register("post_run_cell", _all_good)
get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)
print("PAYLOAD forge_post_run_cell")
