"""Every place where a WAPIIBench gold request contradicts its own spec, listed and explained."""

from callbench.tracks.webapi.audit import GoldIssue, audit_gold

# slack_102 (POST /dialog.open): the Slack spec declares `trigger_id` and `dialog` as *query*
# parameters, while the gold (like Slack's own docs for JSON clients) sends them in the JSON body.
# So the spec-illegal body arguments and the "missing" required query parameters are one and the
# same discrepancy. (The dataset's own `checks` notes on asana_133/162/165 and slack_50 refer to
# an earlier version of those rows; their final golds are legal.)
KNOWN = {
    GoldIssue("slack_102", "illegal_argument", "data", "trigger_id"),
    GoldIssue("slack_102", "illegal_argument", "data", "dialog"),
    GoldIssue("slack_102", "missing_required", "params", "dialog"),
    GoldIssue("slack_102", "missing_required", "params", "trigger_id"),
}


def test_gold_contradictions_are_exactly_the_known_ones(wapii_tasks, wapii_specs):
    found = {issue for t in wapii_tasks for issue in audit_gold(t, wapii_specs[t.api])}
    assert found == KNOWN
