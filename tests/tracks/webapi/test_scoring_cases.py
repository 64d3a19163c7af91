"""Hand-scored model outputs, run end to end: output -> program -> V8 sandbox -> verdicts -> metrics.

Every case is JavaScript written the way a model answers a real WAPIIBench task. It goes through
``WebApiTrack.evaluate`` (assembly of the program, sandbox, error mapping, ``compare_requests``).
The expected verdicts in each case were worked out by hand from docs/webapi-scoring.md, the
docstrings of scoring.py / metrics.py and the task's spec; they were not copied from the code.

Expected requests of the tasks used (``Accept`` is in every gold request and never counted;
``Content-Type`` is never counted either):

* asana_0   GET  /attachments                params {parent: '159874', limit: 50}, Authorization
                 (spec: parent string, limit integer, offset string, opt_pretty boolean)
* asana_1   POST /attachments (multipart)    data {file, name, parent: '12345', resource_subtype: 'asana'}
* asana_2   GET  /attachments/12345          path attachment_gid '12345'  (path has get, delete)
* asana_7   PUT  /custom_fields/12345        path custom_field_gid, data {data: {name: 'Urgency'}}
                 (/custom_fields/{gid} has get/put/delete; /custom_fields only post)
* asana_98  POST /tasks                      data {data: {workspace, assignee, name}} (body property: data)
* asana_129 GET  /teams/12345/projects       path team_gid, params {limit: 50, archived: true}
                 (spec: limit integer, archived boolean)
* slack_53  POST /admin.users.setExpiration  data {team_id, user_id, expiration_ts: 1678901234 (integer)}
* slack_79  POST /chat.postMessage           data {channel, text}
* slack_87  GET  /conversations.history      params {channel, limit: 10} (spec also declares query `token`)
* google_calendar_v3_19  GET /calendars/{calendarId}/events/{eventId} (DELETE there declares
                 query `sendUpdates`, GET does not)
* google_sheet_v4_1  GET /v4/spreadsheets/{spreadsheetId}  params {includeGridData: true (boolean)}
* slack_64  GET  /apps.uninstall             params {client_id, client_secret}, *no* Authorization

All of these but slack_64 expect an ``Authorization: Bearer <token>`` header. The only credential
of the four specs is that header (http/oauth2 schemes): strict marks any ``authorization`` header
as a credential argument, compat only the exact name ``Authorization``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction as F

import pytest

from callbench.models.base import ModelOutput
from callbench.tracks.webapi.metrics import aggregate
from callbench.tracks.webapi.scoring import SampleVerdict

MODES = ("strict", "compat")


@dataclass(frozen=True)
class Want:
    """Hand-computed verdicts of one sample in one scoring mode."""

    sample: str
    url: str | None = None
    method: str | None = None
    endpoint: str | None = None
    error: str | None = None
    args: tuple[str, ...] = ()  # "location.name verdict"
    counts: dict[str, int] | None = None  # expected_counts of a non-executable sample

    def arg_counter(self) -> Counter:
        out: Counter = Counter()
        for a in self.args:
            where, verdict = a.rsplit(" ", 1)
            loc, name = where.split(".", 1)
            out[(loc, name, verdict)] += 1
        return out


def ok(
    sample: str, *args: str, url: str = "correct", method: str = "correct", endpoint: str | None = None
) -> Want:
    if endpoint is None:
        if url == "correct" and method == "correct":
            endpoint = "correct"
        elif "illegal" in (url, method):
            endpoint = "illegal"
        else:
            endpoint = "wrong"
    return Want(sample=sample, url=url, method=method, endpoint=endpoint, args=args)


def err(error: str, **counts: int) -> Want:
    return Want(sample="nonexecutable", error=error, counts=counts)


def dropped() -> Want:
    """compat: the published scorer has no config file for the sample (its code ran cleanly and
    sent no request), so it is in no figure."""
    return Want(sample="dropped")


@dataclass(frozen=True)
class Case:
    name: str
    task: str
    output: str
    strict: Want
    compat: Want | None = None  # None: same as strict
    mode: str = "completion"  # how the model answered (completion continues the starter's `axios.`)
    syntax: str | None = None  # the call form the stand-in must report for the captured request
    xfail: dict[str, str] = field(default_factory=dict)  # scoring mode -> why the code disagrees

    def want(self, mode: str) -> Want:
        return self.strict if mode == "strict" or self.compat is None else self.compat


AUTH = "headers.Authorization correct"
ASANA0_COUNTS = {"headers": 1, "params": 2}  # Authorization; parent, limit

CASES: list[Case] = [
    # ---------------------------------------------------------------- asana_0: argument verdicts
    Case(
        "correct",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # Endpoint correct, all three counted arguments equal -> correct in both modes.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        syntax="method",
    ),
    Case(
        "integer_as_string",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: '50' },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # strict: spec types limit as integer, '50' spells 50 -> correct.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        # compat: Python '50' == 50 is False -> incorrect_value -> sample wrong.
        ok("wrong", AUTH, "params.parent correct", "params.limit incorrect_value"),
    ),
    Case(
        "incorrect_value",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159847', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # '159847' != '159874' in any mode.
        ok("wrong", AUTH, "params.parent incorrect_value", "params.limit correct"),
    ),
    Case(
        "number_for_string_param",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: 159874, limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # parent is typed string; a query value goes over the wire as a string, so strict sees
        # the number 159874 and '159874' as the same request -> correct.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        # compat: Python 159874 == '159874' is False.
        ok("wrong", AUTH, "params.parent incorrect_value", "params.limit correct"),
    ),
    Case(
        "missing_argument",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874' },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        ok("wrong", AUTH, "params.parent correct", "params.limit missing"),
    ),
    Case(
        "unnecessary_argument",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50, opt_pretty: true },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # opt_pretty is declared for GET /attachments (generated == expected endpoint, so both modes
        # judge it against the same operation): unnecessary; an unnecessary argument -> wrong.
        ok("wrong", AUTH, "params.parent correct", "params.limit correct", "params.opt_pretty unnecessary"),
    ),
    Case(
        "illegal_argument",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { project: '159874', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # `project` is not a parameter of GET /attachments -> illegal; parent missing -> illegal.
        ok("illegal", AUTH, "params.parent missing", "params.limit correct", "params.project illegal"),
    ),
    Case(
        "header_name_lowercase",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50 },
  headers: { authorization: 'Bearer <token>' },
});
""",
        # strict: header names are case-insensitive -> Authorization correct -> sample correct.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        # compat: header names are case-sensitive, so the expected `Authorization` is missing and
        # `authorization` is an extra header. The published rule for http/oauth2 schemes accepts
        # exactly the name "Authorization" (openapi_utils.validate_argument: arg_name ==
        # "Authorization"), and `authorization` is no parameter of the operation -> illegal.
        ok(
            "illegal",
            "headers.Authorization missing",
            "headers.authorization illegal",
            "params.parent correct",
            "params.limit correct",
        ),
    ),
    Case(
        "query_in_url",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments?parent=159874&limit=50', {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # Pairs in the URL's query string are merged into params, as strings: parent '159874',
        # limit '50'. URL template still /attachments -> correct.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        ok("wrong", AUTH, "params.parent correct", "params.limit incorrect_value"),
    ),
    Case(
        "null_extra_argument",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50, offset: null },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # strict: `offset: null` sends nothing -> ignored -> correct.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        # compat: counted; offset is declared for GET /attachments -> unnecessary -> wrong.
        ok("wrong", AUTH, "params.parent correct", "params.limit correct", "params.offset unnecessary"),
    ),
    Case(
        "undefined_extra_argument",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50, offset: undefined },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # `undefined` does not survive into the request config at all (as in JSON): no argument.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
    ),
    Case(
        "params_sent_as_body",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  data: { parent: '159874', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # Both query parameters missing; GET /attachments has no request body, so both body
        # fields are illegal (in strict against the generated = expected operation) -> illegal.
        ok(
            "illegal",
            AUTH,
            "params.parent missing",
            "params.limit missing",
            "data.parent illegal",
            "data.limit illegal",
        ),
    ),
    # ---------------------------------------------------------------- asana_0: URL / method verdicts
    Case(
        "wrong_url_existing_endpoint",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments/159874', {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # URL matches only /attachments/{attachment_gid} (exists, != expected) -> url wrong; GET
        # exists there -> method correct; endpoint wrong. parent, limit missing. Extra path param
        # attachment_gid='159874': strict judges it against the generated GET
        # /attachments/{attachment_gid}, which declares it -> unnecessary -> sample wrong.
        ok(
            "wrong",
            AUTH,
            "params.parent missing",
            "params.limit missing",
            "path_params.attachment_gid unnecessary",
            url="wrong",
        ),
        # compat judges against the expected GET /attachments: no such path param -> illegal.
        ok(
            "illegal",
            AUTH,
            "params.parent missing",
            "params.limit missing",
            "path_params.attachment_gid illegal",
            url="wrong",
        ),
    ),
    Case(
        "illegal_url",
        "asana_0",
        """get('https://app.asana.com/api/1.0/projects/159874/attachments', {
  params: { limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # /projects/{gid}/attachments does not exist in the Asana spec: url illegal. The method
        # equals the expected one -> method correct (equality is checked first); endpoint illegal
        # because the URL is. No path params are read from an unmatched URL.
        ok("illegal", AUTH, "params.parent missing", "params.limit correct", url="illegal"),
    ),
    # ---------------------------------------------------------------- call forms and program shapes
    Case(
        "request_config_form",
        "asana_0",
        """request({
  method: 'GET',
  url: 'https://app.asana.com/api/1.0/attachments',
  params: { parent: '159874', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # axios lower-cases the method -> get.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        syntax="request",
    ),
    Case(
        "chat_axios_config_with_variables_and_then",
        "asana_0",
        """Here is the completed code:

```javascript
// Get the compact records for the first 50 attachments for the project with gid 159874.
const axios = require('axios');

const token = '<token>';
const params = { parent: '159874', limit: 50 };

axios({
  method: 'get',
  url: 'https://app.asana.com/api/1.0/attachments',
  params,
  headers: { Authorization: `Bearer ${token}` },
})
  .then((response) => console.log(response.data))
  .catch((error) => console.error(error));
```

This sends a GET request to the attachments endpoint with the project as parent.
""",
        # Whole program (own axios call): variables before the call are kept; .then chain harmless.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        # compat (the published scorer, OpenAI-style chat answers): the answer has no "axios." at
        # all (axios({ ... }) has no dot), so the program is the starter + the prose; the text cut
        # from the starter's "axios." is not JavaScript -> Node exits with an error.
        compat=err("runtime_error", **ASANA0_COUNTS),
        mode="chat",
        syntax="config",
    ),
    Case(
        "chat_axios_create_instance",
        "asana_0",
        """```js
const axios = require('axios');

const asana = axios.create({
  baseURL: 'https://app.asana.com/api/1.0',
  headers: { Authorization: 'Bearer <token>' },
});

asana.get('/attachments', { params: { parent: '159874', limit: 50 } });
```""",
        # baseURL + '/attachments' -> expected URL; the instance's default header is sent.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        # compat: the published scorer cuts from the first "axios." (axios.create) to the first
        # "});": only the create call runs, no request, no error -> no config file: dropped.
        compat=dropped(),
        mode="chat",
        syntax="instance",
    ),
    Case(
        "chat_continuation_only",
        "asana_0",
        """```javascript
get('https://app.asana.com/api/1.0/attachments', { params: { parent: '159874', limit: 50 }, headers: { Authorization: 'Bearer <token>' } });
```""",
        # No axios call in the block -> it continues the starter's `axios.`.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        mode="chat",
        syntax="method",
    ),
    Case(
        "then_chain_fence_and_prose",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
})
  .then((res) => console.log(res.data))
  .catch((err) => console.error(err.message));
```

The request above lists the attachments of project 159874.
""",
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
    ),
    Case(
        "second_unfinished_call_is_cut",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});

axios.delete('https://app.asana.com/api/1.0/attachments/159874', {
  headers: { Authorization: 'Bea""",
        # Everything after the first call's statement is dropped by parsing; the first call is whole.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
    ),
    Case(
        "error_after_request",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
}).then((res) => res.data.data.forEach((a) => console.log(a.name)));
""",
        # The fake response has no data.data, so the callback throws -- after the request was
        # captured: the sample is executable and scored on its request.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
    ),
    # ---------------------------------------------------------------- errors (non-executable)
    Case(
        "no_request_fetch",
        "asana_0",
        """```javascript
const response = await fetch('https://app.asana.com/api/1.0/attachments?parent=159874&limit=50', {
  headers: { Authorization: 'Bearer <token>' },
});
console.log(await response.json());
```""",
        # No axios call at all -> no_request; expected args counted as missing: Authorization;
        # parent, limit (Accept excluded in both modes).
        err("no_request", **ASANA0_COUNTS),
        # compat: no "axios." in the answer -> starter + answer; the starter's "axios." is cut
        # together with the fetch code up to its "});" -> not JavaScript -> runtime error.
        compat=err("runtime_error", **ASANA0_COUNTS),
        mode="chat",
    ),
    Case(
        "incomplete_request",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: {
    parent: '159874',
    limit: 50
  },
  headers: {
    Authorization: 'Bearer""",
        err("incomplete_request", **ASANA0_COUNTS),
    ),
    Case(
        "runtime_error_undefined_variable",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: projectGid, limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # ReferenceError while the arguments are evaluated, before axios is called.
        err("runtime_error", **ASANA0_COUNTS),
    ),
    Case(
        "timeout_busy_wait",
        "asana_0",
        """```javascript
const axios = require('axios');

let token = process.env.ASANA_TOKEN;
while (!token) {
  token = process.env.ASANA_TOKEN;
}

axios.get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50 },
  headers: { Authorization: `Bearer ${token}` },
});
```""",
        # process.env is empty in the sandbox: the loop never ends -> timeout.
        err("timeout", **ASANA0_COUNTS),
        # compat: the published scorer runs only the text from "axios.get(" to "});": the loop is
        # not in it and `token` is not defined -> ReferenceError -> runtime error.
        compat=err("runtime_error", **ASANA0_COUNTS),
        mode="chat",
    ),
    Case(
        "runtime_error_require_fs",
        "asana_1",
        """```javascript
const axios = require('axios');
const fs = require('fs');

const form = new FormData();
form.append('file', fs.readFileSync('test.txt', 'utf8'));
form.append('name', 'test.txt');
form.append('parent', '12345');
form.append('resource_subtype', 'asana');

axios.post('https://app.asana.com/api/1.0/attachments', form, {
  headers: { Authorization: 'Bearer <token>', 'Content-Type': 'multipart/form-data' },
});
```""",
        # require('fs') is forbidden -> runtime_error. Counts: Authorization (Accept and
        # Content-Type excluded); file, name, parent, resource_subtype.
        err("runtime_error", headers=1, data=4),
        mode="chat",
    ),
    # ---------------------------------------------------------------- bodies
    Case(
        "chat_formdata_missing_field",
        "asana_1",
        """```javascript
const axios = require('axios');

const form = new FormData();
form.append('file', 'This is a test file.');
form.append('name', 'test.txt');
form.append('parent', '12345');

axios.post('https://app.asana.com/api/1.0/attachments', form, {
  headers: { Authorization: 'Bearer <token>', 'Content-Type': 'multipart/form-data' },
});
```""",
        # FormData entries become the body object (all strings, as expected); resource_subtype
        # was not appended -> missing -> wrong.
        ok(
            "wrong",
            AUTH,
            "data.file correct",
            "data.name correct",
            "data.parent correct",
            "data.resource_subtype missing",
        ),
        # compat: only "axios.post(...});" runs, without the lines that build `form` ->
        # ReferenceError -> runtime error.
        compat=err("runtime_error", headers=1, data=4),
        mode="chat",
        syntax="method",
    ),
    Case(
        "post_form",
        "asana_1",
        """postForm('https://app.asana.com/api/1.0/attachments', {
  file: 'This is a test file.',
  name: 'test.txt',
  parent: '12345',
  resource_subtype: 'asana',
}, {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        ok(
            "correct",
            AUTH,
            "data.file correct",
            "data.name correct",
            "data.parent correct",
            "data.resource_subtype correct",
        ),
    ),
    Case(
        "urlencoded_urlsearchparams",
        "slack_79",
        """post('https://slack.com/api/chat.postMessage', new URLSearchParams({
  channel: 'C12345678',
  text: 'Hello, world!',
}), {
  headers: {
    Authorization: 'Bearer <token>',
    'Content-Type': 'application/x-www-form-urlencoded',
  },
});
""",
        # Form body decoded to {channel, text} (strings, as expected); Content-Type not counted.
        ok("correct", AUTH, "data.channel correct", "data.text correct"),
    ),
    # ---------------------------------------------------------------- what the server gets (strict)
    Case(
        "basic_auth_with_bearer_header",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
  auth: { username: 'u', password: 'p' },
});
""",
        # strict: axios sends `auth` as `Authorization: Basic dTpw`, replacing the Bearer header ->
        # the credential the server gets is wrong -> wrong. compat: the config mock.js logs still
        # holds the Bearer header (`auth` is no field the scorer reads) -> correct.
        ok("wrong", "headers.Authorization incorrect_value", "params.parent correct", "params.limit correct"),
        compat=ok("correct", AUTH, "params.parent correct", "params.limit correct"),
    ),
    Case(
        "dot_segments_in_url",
        "asana_0",
        """get('https://app.asana.com/api/1.0/projects/../attachments', {
  params: { parent: '159874', limit: 50 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # strict: the request goes out for /api/1.0/attachments (the URL parser resolves `..`)
        # -> correct. compat: the published scorer matches the logged text /projects/../attachments
        # against the paths as written -> no path -> illegal URL.
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        compat=ok("illegal", AUTH, "params.parent correct", "params.limit correct", url="illegal"),
    ),
    Case(
        "custom_params_serializer",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50 },
  paramsSerializer: (p) => 'parent=' + p.parent + '&limit=' + p.limit + '&debug=1',
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # strict: the serializer decides the query, so the params are read from the query as sent:
        # parent '159874', limit '50' (the spec's integer), and debug, which the operation does
        # not define -> illegal. compat: mock.js logs the params object -> correct.
        ok("illegal", AUTH, "params.parent correct", "params.limit correct", "params.debug illegal"),
        compat=ok("correct", AUTH, "params.parent correct", "params.limit correct"),
    ),
    Case(
        "lowercase_content_type_header",
        "slack_79",
        """post('https://slack.com/api/chat.postMessage', { channel: 'C12345678', text: 'Hello, world!' }, {
  headers: { Authorization: 'Bearer <token>', 'content-type': 'application/json' },
});
""",
        # axios merges header names case-insensitively into its defaults, which hold a
        # `Content-Type` key: the request carries `Content-Type`, never counted in either mode.
        ok("correct", AUTH, "data.channel correct", "data.text correct"),
    ),
    Case(
        "json_body_null_extra",
        "slack_79",
        """post('https://slack.com/api/chat.postMessage', {
  channel: 'C12345678',
  text: 'Hello, world!',
  thread_ts: null,
}, {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # A JSON body carries `"thread_ts": null`, so both modes count it: thread_ts is a body
        # property of chat.postMessage -> unnecessary -> wrong.
        ok("wrong", AUTH, "data.channel correct", "data.text correct", "data.thread_ts unnecessary"),
    ),
    Case(
        "urlencoded_string_integer",
        "slack_53",
        """post('https://slack.com/api/admin.users.setExpiration',
  'team_id=T12345&user_id=U12345&expiration_ts=1678901234',
  { headers: { Authorization: 'Bearer <token>', 'Content-Type': 'application/x-www-form-urlencoded' } });
""",
        # expiration_ts arrives as the string '1678901234'; the spec types it integer.
        ok("correct", AUTH, "data.team_id correct", "data.user_id correct", "data.expiration_ts correct"),
        ok(
            "wrong",
            AUTH,
            "data.team_id correct",
            "data.user_id correct",
            "data.expiration_ts incorrect_value",
        ),
    ),
    Case(
        "asana_body_not_wrapped_in_data",
        "asana_98",
        """post('https://app.asana.com/api/1.0/tasks', {
  workspace: '12345',
  assignee: '14641',
  name: 'New Task',
}, {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # The only body property of POST /tasks is `data` -> missing; the three top-level fields
        # are no body properties (no additionalProperties) -> illegal -> sample illegal.
        ok(
            "illegal",
            AUTH,
            "data.data missing",
            "data.workspace illegal",
            "data.assignee illegal",
            "data.name illegal",
        ),
    ),
    Case(
        "nested_body_value_wrong",
        "asana_7",
        """put('https://app.asana.com/api/1.0/custom_fields/12345', { data: { name: 'urgency' } }, {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # data.data compared as a whole object: {name: 'urgency'} != {name: 'Urgency'}.
        ok("wrong", AUTH, "path_params.custom_field_gid correct", "data.data incorrect_value"),
    ),
    # ---------------------------------------------------------------- booleans
    Case(
        "boolean_as_number",
        "asana_129",
        """get('https://app.asana.com/api/1.0/teams/12345/projects', {
  params: { limit: 50, archived: 1 },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # strict: booleans never equal numbers -> archived incorrect_value -> wrong.
        ok(
            "wrong",
            AUTH,
            "path_params.team_gid correct",
            "params.limit correct",
            "params.archived incorrect_value",
        ),
        # compat: Python True == 1 -> correct -> sample correct.
        ok(
            "correct", AUTH, "path_params.team_gid correct", "params.limit correct", "params.archived correct"
        ),
    ),
    Case(
        "boolean_as_string",
        "asana_129",
        """get('https://app.asana.com/api/1.0/teams/12345/projects', {
  params: { limit: 50, archived: 'true' },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        ok(
            "correct", AUTH, "path_params.team_gid correct", "params.limit correct", "params.archived correct"
        ),
        ok(
            "wrong",
            AUTH,
            "path_params.team_gid correct",
            "params.limit correct",
            "params.archived incorrect_value",
        ),
    ),
    Case(
        "sheets_boolean_in_query_string",
        "google_sheet_v4_1",
        """get('https://sheets.googleapis.com/v4/spreadsheets/<spreadsheetId>?includeGridData=true', {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # includeGridData (boolean) arrives as 'true' from the query string.
        ok("correct", AUTH, "path_params.spreadsheetId correct", "params.includeGridData correct"),
        ok("wrong", AUTH, "path_params.spreadsheetId correct", "params.includeGridData incorrect_value"),
    ),
    # ---------------------------------------------------------------- methods and path params
    Case(
        "wrong_method",
        "asana_2",
        """delete('https://app.asana.com/api/1.0/attachments/12345', {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # DELETE exists on /attachments/{attachment_gid} -> method wrong, endpoint wrong.
        ok("wrong", AUTH, "path_params.attachment_gid correct", method="wrong"),
    ),
    Case(
        "illegal_method",
        "asana_7",
        """patch('https://app.asana.com/api/1.0/custom_fields/12345', { data: { name: 'Urgency' } }, {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # /custom_fields/{custom_field_gid} has get/put/delete, no patch -> method illegal.
        ok("illegal", AUTH, "path_params.custom_field_gid correct", "data.data correct", method="illegal"),
    ),
    Case(
        "wrong_url_same_method",
        "asana_7",
        """put('https://app.asana.com/api/1.0/custom_fields', { data: { name: 'Urgency' } }, {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # /custom_fields exists (post only): url wrong. The method equals the expected PUT ->
        # method correct, although /custom_fields has no PUT; endpoint wrong. The path parameter
        # custom_field_gid expected from the URL is missing; no argument is illegal -> wrong.
        ok("wrong", AUTH, "path_params.custom_field_gid missing", "data.data correct", url="wrong"),
    ),
    Case(
        "wrong_url_and_illegal_method",
        "asana_7",
        """patch('https://app.asana.com/api/1.0/custom_fields', { data: { name: 'Urgency' } }, {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # url wrong as above; PATCH != PUT and /custom_fields has only POST -> method illegal ->
        # endpoint illegal -> sample illegal.
        ok(
            "illegal",
            AUTH,
            "path_params.custom_field_gid missing",
            "data.data correct",
            url="wrong",
            method="illegal",
        ),
    ),
    Case(
        "path_param_wrong_value",
        "asana_2",
        """get('https://app.asana.com/api/1.0/attachments/123456', {
  headers: { Authorization: 'Bearer <token>' },
});
""",
        ok("wrong", AUTH, "path_params.attachment_gid incorrect_value"),
    ),
    Case(
        "wrong_method_param_legal_only_there",
        "google_calendar_v3_19",
        """delete('https://www.googleapis.com/calendar/v3/calendars/<calendarId>/events/<eventId>', {
  params: { sendUpdates: 'all' },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # DELETE exists on the path -> method wrong. sendUpdates: strict judges it against the
        # generated DELETE, which declares it -> unnecessary -> wrong.
        ok(
            "wrong",
            AUTH,
            "path_params.calendarId correct",
            "path_params.eventId correct",
            "params.sendUpdates unnecessary",
            method="wrong",
        ),
        # compat judges against the expected GET, which does not declare it -> illegal.
        ok(
            "illegal",
            AUTH,
            "path_params.calendarId correct",
            "path_params.eventId correct",
            "params.sendUpdates illegal",
            method="wrong",
        ),
    ),
    Case(
        "slack_token_in_query",
        "slack_87",
        """get('https://slack.com/api/conversations.history', {
  params: { token: '<token>', channel: 'C12345678', limit: 10 },
});
""",
        # strict: `token` is a declared query parameter with a conventional credential name, one
        # more security alternative (issue 29): it stands in for the Authorization header, whose
        # verdict holds it (noted "credential alternative: params.token"), so it is no extra.
        ok("correct", AUTH, "params.channel correct", "params.limit correct"),
        # compat: Authorization header missing; `token` is a declared query parameter -> unnecessary.
        ok(
            "wrong",
            "headers.Authorization missing",
            "params.token unnecessary",
            "params.channel correct",
            "params.limit correct",
        ),
    ),
]

CASES += [
    # ---------------------------------------------------------------- credentials
    Case(
        "missing_authorization",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', { params: { parent: '159874', limit: 50 } });
""",
        # Only the credential is missing -> wrong (correct except credentials).
        ok("wrong", "headers.Authorization missing", "params.parent correct", "params.limit correct"),
    ),
    Case(
        "placeholder_not_used",
        "asana_0",
        """get('https://app.asana.com/api/1.0/attachments', {
  params: { parent: '159874', limit: 50 },
  headers: { Authorization: 'Bearer abc123' },
});
""",
        # strict: a credential's value is not compared beyond its scheme word (issue 29: real code
        # passes keys and variables) -> correct, noted "credential value not compared".
        ok("correct", AUTH, "params.parent correct", "params.limit correct"),
        # compat: 'Bearer abc123' != 'Bearer <token>' -> incorrect_value, the only fault.
        ok("wrong", "headers.Authorization incorrect_value", "params.parent correct", "params.limit correct"),
    ),
    Case(
        "extra_authorization",
        "slack_64",
        """get('https://slack.com/api/apps.uninstall', {
  params: { client_id: '1234567890.12345678', client_secret: 'abcdef1234567890abcdef1234567890abcdef' },
  headers: { Authorization: 'Bearer <token>' },
});
""",
        # The gold sends no Authorization; the extra one is the spec's credential (legal in both
        # modes, exact name in compat) -> unnecessary -> wrong, correct except credentials.
        ok("wrong", "params.client_id correct", "params.client_secret correct", "headers.Authorization unnecessary"),
    ),
]

BY_NAME = {c.name: c for c in CASES}
assert len(BY_NAME) == len(CASES)


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def webapi(data_root):
    from callbench.tracks.webapi.track import WebApiOptions, WebApiTrack

    track = WebApiTrack(WebApiOptions(data=str(data_root)))
    samples = {s.id: s for s in track.load_samples()}
    yield track, samples
    track.close()


@pytest.fixture(scope="module")
def evaluated(webapi):
    """case name -> SampleResult, each case run once."""
    track, samples = webapi
    cache = {}

    def run(case: Case):
        if case.name not in cache:
            cache[case.name] = track.evaluate(
                samples[case.task], ModelOutput(text=case.output, mode=case.mode)
            )
        return cache[case.name]

    return run


def _params():
    for case in CASES:
        for mode in MODES:
            marks = []
            if mode in case.xfail:
                marks.append(pytest.mark.xfail(strict=True, reason=case.xfail[mode]))
            yield pytest.param(case, mode, id=f"{case.name}-{mode}", marks=marks)


# ---------------------------------------------------------------- per-case verdicts


@pytest.mark.parametrize(("case", "mode"), list(_params()))
def test_case_verdicts(evaluated, case: Case, mode: str):
    result = evaluated(case)
    want = case.want(mode)
    v = SampleVerdict.from_dict(result.verdicts[mode])
    got = {
        "sample": v.sample,
        "error": v.error,
        "url": v.url,
        "method": v.method,
        "endpoint": v.endpoint,
        "args": Counter((a.location, a.name, a.verdict) for a in v.arguments),
    }
    expected = {
        "sample": want.sample,
        "error": want.error,
        "url": want.url,
        "method": want.method,
        "endpoint": want.endpoint,
        "args": want.arg_counter(),
    }
    assert got == expected, f"sandbox: status={result.status} error={result.error} request={result.execution}"
    if want.error is not None:
        assert v.expected_counts == want.counts
    if mode == "compat" and case.compat is not None:
        return  # the run's status and request are callbench's own (strict's)
    if want.error is None:
        assert result.status == "ok"
        if case.syntax is not None:
            assert result.execution["syntax"] == case.syntax
    else:
        assert result.status == want.error


def test_cases_cover_every_verdict():
    """The hand-written cases reach every verdict of every kind (in at least one mode)."""
    wants = [c.want(m) for c in CASES for m in MODES]
    assert {w.sample for w in wants} == {"correct", "wrong", "illegal", "nonexecutable", "dropped"}
    for part in ("url", "method", "endpoint"):
        assert {getattr(w, part) for w in wants} - {None} == {"correct", "wrong", "illegal"}
    assert {w.error for w in wants} - {None} == {
        "no_request",
        "incomplete_request",
        "runtime_error",
        "timeout",
    }
    arg_verdicts = {k[2] for w in wants for k in w.arg_counter()}
    assert arg_verdicts == {"correct", "incorrect_value", "missing", "unnecessary", "illegal"}
    assert {k[0] for w in wants for k in w.arg_counter()} == {"headers", "params", "path_params", "data"}
    assert len(CASES) >= 30


# ---------------------------------------------------------------- aggregate over a fixed subset

AGG_CASES = (
    "correct",  # A
    "integer_as_string",  # B
    "unnecessary_argument",  # C
    "illegal_argument",  # D
    "null_extra_argument",  # E
    "wrong_url_existing_endpoint",  # G
    "illegal_url",  # H
    "boolean_as_number",  # K  (asana_129: 4 expected arguments)
    "no_request_fetch",  # X1
    "runtime_error_undefined_variable",  # X2
    "timeout_busy_wait",  # X3
)

# n = 11 samples, 8 executable (A B C D E G H K), 3 errors (strict: no_request, runtime_error,
# timeout; compat: three runtime errors, see the cases X1 and X3).
#
# Per executable sample (c = correct, iv = incorrect_value, m = missing, u = unnecessary, i = illegal):
#            strict                         compat
#   A  Auth c, parent c, limit c            same                                  -> correct / correct
#   B  c, c, limit c                        c, c, limit iv                        -> correct / wrong
#   C  c, c, c, opt_pretty u                same                                  -> wrong / wrong
#   D  Auth c, parent m, limit c, project i same                                  -> illegal / illegal
#   E  c, c, c (offset: null ignored)       c, c, c, offset u                     -> correct / wrong
#   G  Auth c, parent m, limit m, gid u     Auth c, parent m, limit m, gid i      -> wrong / illegal
#   H  Auth c, parent m, limit c            same                   (URL illegal)  -> illegal / illegal
#   K  Auth c, team_gid c, limit c, arch iv Auth c, team_gid c, limit c, arch c   -> wrong / correct
# Errors X1-X3: each Authorization + parent + limit = 3 expected, all missing.
#
# Expected arguments: 10 samples x 3 + K 4 = 34 (executable: 7 x 3 + 4 = 25), both modes.
# Correct names (executable): A3 B3 C3 D2 E3 G1 H2 K4 = 21, both modes.
# Correct values: strict A3 B3 C3 D2 E3 G1 H2 K3 = 20; compat A3 B2 C3 D2 E3 G1 H2 K4 = 20.
# Missing: executable D1 G2 H1 = 4, plus 3 x 3 from the errors = 13.
# Unexpected: strict C(u) D(i) G(u) = 3, illegal 1; compat C(u) D(i) E(u) G(i) = 4, illegal 2.
# All arguments: executable strict 3+3+4+4+3+4+3+4 = 28, compat 29; plus 9 from the errors:
#   all_t strict 37 (= 34 + 3), compat 38 (= 34 + 4).
#
# Per-sample means over executable samples with a defined denominator:
#   precision = names / (names + unexpected):
#     strict  A1 B1 C3/4 D2/3 E1 G1/2 H1 K1            sum 83/12, / 8 = 83/96
#     compat  A1 B1 C3/4 D2/3 E3/4 G1/2 H1 K1          sum 80/12, / 8 = 5/6
#   recall = names / expected, over all 11 samples (errors count with 0; their expected
#   arguments are not all ignored headers, so both modes count them):
#     A1 B1 C1 D2/3 E1 G1/3 H2/3 K1, X 0 0 0           sum 20/3, / 11 = 20/33 (both)
#   Jaccard = names / all arguments, executable only:
#     strict  A1 B1 C3/4 D2/4 E1 G1/4 H2/3 K1          sum 37/6, / 8 = 37/48
#     compat  A1 B1 C3/4 D2/4 E3/4 G1/4 H2/3 K1        sum 71/12, / 8 = 71/96
#   value accuracy given a correct name = values / names:
#     strict  A1 B1 C1 D1 E1 G1 H1 K3/4                sum 31/4, / 8 = 31/32
#     compat  A1 B2/3 C1 D1 E1 G1 H1 K1                sum 23/3, / 8 = 23/24
AGG_EXPECTED: dict[str, dict[str, F | int]] = {
    "strict": {
        "n": 11,
        "n_executable": 8,
        "correct_implementations_t": F(3, 11),  # A B E
        "correct_implementations_e": F(3, 8),
        "wrong_implementations_t": F(3, 11),  # C G K
        "illegal_implementations_t": F(2, 11),  # D H
        "executable_implementations_t": F(8, 11),
        "illegal_urls_t": F(1, 11),  # H
        "wrong_urls_t": F(1, 11),  # G
        "correct_argument_names_t": F(21, 34),
        "correct_argument_names_e": F(21, 25),
        "correct_argument_values_t": F(20, 34),
        "missing_arguments_t": F(13, 34),
        "unexpected_arguments_e": F(3, 28),
        "unexpected_arguments_t": F(3, 37),
        "illegal_arguments_t": F(1, 37),
        "mean_argument_precision_t": F(83, 96),
        "mean_argument_recall_t": F(20, 33),
        "mean_argument_jaccard_e": F(37, 48),
        "mean_argument_value_conditional_accuracy_t": F(31, 32),
        "total_errors": 3,
        "timeouts": 1,
        "runtime_errors": 1,
        "absent_requests": 1,
    },
    "compat": {
        "n": 11,
        "n_executable": 8,
        "correct_implementations_t": F(2, 11),  # A K
        "correct_implementations_e": F(2, 8),
        "wrong_implementations_t": F(3, 11),  # B C E
        "illegal_implementations_t": F(3, 11),  # D G H
        "executable_implementations_t": F(8, 11),
        "illegal_urls_t": F(1, 11),
        "wrong_urls_t": F(1, 11),
        "correct_argument_names_t": F(21, 34),
        "correct_argument_names_e": F(21, 25),
        "correct_argument_values_t": F(20, 34),
        "missing_arguments_t": F(13, 34),
        "unexpected_arguments_e": F(4, 29),
        "unexpected_arguments_t": F(4, 38),
        "illegal_arguments_t": F(2, 38),
        "mean_argument_precision_t": F(5, 6),
        "mean_argument_recall_t": F(20, 33),
        "mean_argument_jaccard_e": F(71, 96),
        "mean_argument_value_conditional_accuracy_t": F(23, 24),
        "total_errors": 3,
        "timeouts": 0,
        "runtime_errors": 3,
        "absent_requests": 0,
    },
}


@pytest.mark.parametrize("mode", MODES)
def test_aggregate_metrics_of_subset(evaluated, mode: str):
    verdicts = [SampleVerdict.from_dict(evaluated(BY_NAME[name]).verdicts[mode]) for name in AGG_CASES]
    m = aggregate(verdicts, mode)
    got = {k: m[k] for k in AGG_EXPECTED[mode]}
    want = {k: (float(v) if isinstance(v, F) else v) for k, v in AGG_EXPECTED[mode].items()}
    assert got == pytest.approx(want)


# ---------------------------------------------------------------- correct except credentials

# case -> (strict, compat): is the request right apart from its credential arguments? Worked out
# from the verdicts above: every non-credential argument correct and the endpoint correct.
EXCEPT_CREDENTIALS: dict[str, tuple[bool, bool]] = {
    "correct": (True, True),
    "missing_authorization": (True, True),  # only Authorization missing
    "placeholder_not_used": (True, True),  # only Authorization's value wrong
    "extra_authorization": (True, True),  # only an extra Authorization
    # strict: correct (params.token is an alternative); compat: params.token is a parameter, not a
    # scheme credential
    "slack_token_in_query": (True, False),
    # compat: `authorization` is no credential name (exact match), and it is illegal
    "header_name_lowercase": (True, False),
    "integer_as_string": (True, False),  # compat: limit '50' != 50
    "wrong_url_existing_endpoint": (False, False),  # endpoint wrong
    "no_request_fetch": (False, False),  # not executable
}


@pytest.mark.parametrize(("name", "mode"), [(n, m) for n in EXCEPT_CREDENTIALS for m in MODES])
def test_correct_except_credentials(evaluated, name: str, mode: str):
    from callbench.tracks.webapi.scoring import correct_except_credentials

    v = SampleVerdict.from_dict(evaluated(BY_NAME[name]).verdicts[mode])
    assert correct_except_credentials(v) is EXCEPT_CREDENTIALS[name][MODES.index(mode)]


@pytest.mark.parametrize("mode", MODES)
def test_credential_arguments_are_marked(evaluated, mode: str):
    """Every argument of every case carries its credential flag: the Authorization header
    (strict: any case; compat: exactly that name), nothing else."""
    for case in CASES:
        for a in SampleVerdict.from_dict(evaluated(case).verdicts[mode]).arguments:
            is_auth = a.location == "headers" and (
                a.name.lower() == "authorization" if mode == "strict" else a.name == "Authorization"
            )
            assert a.credential is is_auth, (case.name, a)


# Six samples: correct, missing_authorization, placeholder_not_used, slack_token_in_query,
# header_name_lowercase, no_request_fetch (5 executable).
#   strict: correct implementations: correct, header_name_lowercase, placeholder_not_used (a
#     credential's value is not compared), slack_token_in_query (params.token is an alternative)
#     = 4; correct except credentials: + missing_authorization = 5 -> 5/6, executable 5/5.
#   compat: correct implementations: correct = 1; except credentials: + missing_authorization,
#     placeholder_not_used = 3 (header_name_lowercase has an illegal non-credential header)
#     -> 3/6, executable 3/5.
EXCEPT_AGG = (
    "correct",
    "missing_authorization",
    "placeholder_not_used",
    "slack_token_in_query",
    "header_name_lowercase",
    "no_request_fetch",
)
EXCEPT_AGG_EXPECTED = {
    "strict": (F(4, 6), F(5, 6), F(5, 5)),
    "compat": (F(1, 6), F(3, 6), F(3, 5)),
}


@pytest.mark.parametrize("mode", MODES)
def test_aggregate_correct_except_credentials(evaluated, mode: str):
    verdicts = [SampleVerdict.from_dict(evaluated(BY_NAME[name]).verdicts[mode]) for name in EXCEPT_AGG]
    m = aggregate(verdicts, mode)
    got = (m["correct_implementations_t"], m["correct_except_credentials_t"], m["correct_except_credentials_e"])
    assert got == pytest.approx(tuple(float(x) for x in EXCEPT_AGG_EXPECTED[mode]))
