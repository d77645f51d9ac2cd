"""`moot eval`: independent evaluator agents score a debate's final solution.

Evaluators are configured separately from the debate (their own JSON/TOML file),
run concurrently through the same Provider interface as the debaters, and are
parsed tolerantly: one evaluator's garbage or failure is reported, never fatal,
unless every evaluator fails. The debate folder is only read, never written. What comes back from the servers is
masked (`redact`) before anything is rendered, and every rendering is terminal-safe.
"""

from .calls import run_evaluators, solution_block
from .evaluators import EvalConfig, EvaluatorConfig, default_evaluators, load_eval_config
from .render import FORMATS, render_csv, render_json, render_markdown
from .scores import CRITERIA, EvaluatorResult, Score, averages, parse_scores, parse_value

__all__ = ["CRITERIA", "FORMATS", "EvalConfig", "EvaluatorConfig", "EvaluatorResult", "Score", "averages",
           "default_evaluators", "load_eval_config", "parse_scores", "parse_value", "render_csv", "render_json",
           "render_markdown", "run_evaluators", "solution_block"]
