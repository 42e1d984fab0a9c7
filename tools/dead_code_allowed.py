"""Names in gpucost_lab/ that only a framework or a string uses (tools/dead_code.py passes this file to vulture).

Each line uses one name, as vulture's whitelists do; the comment says who uses it.
"""

# ruff: noqa: B018, F821
_ = object()

file  # cli/errors.py: a parameter of warnings.showwarning's signature
_.showwarning  # cli/main.py: the warnings module calls the hook assigned here
call_dumps  # grading/answers.py: called by name in the code the grader evaluates in the learner's kernel
call_send
_.control_channel_class  # grading/run.py: jupyter_client's channel classes, traits of the kernel client
_.iopub_channel_class
_.stdin_channel_class
_.shell_channel_class
handle_comm_msg  # grading/run.py: nbclient calls these on the notebook client, display_id among their arguments
_update_display_id
_recv  # grading/run.py: jupyter_client's channel calls it for every message
display_id
_no_fsync  # grading/classes.py: an SQLAlchemy "connect" listener, registered by its decorator
_.sanitize_preprocessors  # grading/course.py: nbgrader configuration traits
_.force
_.error_on_timeout
_.execution_count
_.enabled
SafeExchangeCollect  # grading/exchange.py: named in nbgrader_config.py and deploy/hub/z2jh-values.yaml
do_copy  # nbgrader's ExchangeCollect calls it
DropDuplicateIds  # grading/execute.py: nbconvert preprocessors, named in the grading steps' configuration
CappedClient
_capped_context  # nbclient calls it
SanitizeLearnerHTML
preprocess_cell  # nbconvert calls it
sanitize_css  # bleach's CSS sanitizer interface
_repr_pretty_  # IPython's pretty printer calls it, with `cycle`
cycle
visible_points  # grading/reports.py: a report field read by name (README, "self-check")
baseline_metric_per_seed  # quality/parity.py: a record field, in the record's dict and printed tables
fp16_tflops  # roofline/bound.py: catalog fields read by name from data/hardware.json
bf16_tflops
peak_reason  # roofline/bound.py: a record field shown to the learner
Bytes  # timeline/reader.py: a msgspec field named as in the trace's JSON
_.avgpool  # timeline/weight_upload.py: the module names a torch state_dict's keys come from
_.classifier
__getattr__  # grading/__init__.py: module attributes loaded on first use (PEP 562), so that importing the package
__dir__  # in a learner's kernel does not import nbgrader
provider  # serve/sizing.py: catalog fields read by name from data/instance_prices.json, shown in its table
assumption
