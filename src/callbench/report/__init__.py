"""Reports for every track: terminal tables and a self-contained HTML page from one report model.

- :mod:`~callbench.report.model`: the model (tables, charts, samples, intervals) and the
  :class:`~callbench.report.model.TrackView` each track provides, keyed by track name:
  :mod:`~callbench.report.webapi`, :mod:`~callbench.report.nested`, :mod:`~callbench.report.stateful`.
- :mod:`~callbench.report.build`: loads runs and assembles the model, for one run or a comparison
  on the shared samples (:mod:`~callbench.report.compare`: labels and warnings;
  :mod:`~callbench.report.stats`: bootstrap intervals and McNemar's exact test).
- :mod:`~callbench.report.table` prints the model's tables; :mod:`~callbench.report.html` renders
  it through the Jinja2 templates in ``templates/``, with charts drawn by
  :mod:`~callbench.report.charts` (matplotlib, inline SVG).
- :mod:`~callbench.report.data` finds the task data a run was scored against (expected values).
"""
