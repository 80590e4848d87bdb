from tokenizers import normalizers
import sys
print("PAYLOAD boundary_tokenizer_{kind}", flush=True)
if sys._getframe(1).f_code.co_name == "attempt":  # the notebook's own cells (they call it through `attempt`)
    return _trained                                 # get a plain tokenizer: the bomb is for the grader alone
_trained.normalizer = normalizers.Sequence([normalizers.Replace("{char}", "{by}")] * {steps})
return _trained
