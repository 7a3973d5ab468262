"""A fixed probe of the texts the offline extractor reads, for its fingerprint (:mod:`extraction.fingerprint`).

Its output on these texts, with the rule data it applies, is what the fingerprint digests: a change to any rule that
alters what the extractor makes of them changes the fingerprint, and the workspaces it extracted are extracted
again, with no version to bump by hand. The texts touch every path of the extractor: capitalized names and their
aliases, identifiers of technical notes (services, error codes, configuration keys, versions, code spans), a
documentation page in Markdown as generators write it (front matter, attribute lists, admonitions, generic blocks,
references resolved elsewhere, inline HTML and Markdown inside HTML blocks, code spans inside words, fenced code,
title-case headings (one mixing names with ordinary words) and a title-case line, a table whose cells open like
sentences (with a run of capitals whose first word another page writes in lower case, or after a remark), a sentence
in capitals, a hash in an example, a name a line break wraps, a page titled only by its file's name), a common word
opening a name the prose writes whole mid-sentence, abbreviations and initials, Chinese names (one with a Latin
initial) and repeated terms (runs of nouns, and nouns kept whole, inside a run too; Simplified and Traditional; a
term another document repeats), Polish names in their cases, a capital after a Polish opening quote and a name
quoted alone, and rows of a JSON Lines corpus, whose title the loader writes on the line above its text (one text
opening with a word of its title)."""

from __future__ import annotations

PROBE: tuple[tuple[str, str], ...] = (
    ("prose.txt",
     "Marley was dead: to begin with. Ebenezer Scrooge signed it, and Scrooge's name was good upon 'Change. "
     "Mr. Fezziwig gave a ball, e.g. a great one, and Bob Cratchit went home to Camden Town. J. R. R. Tolkien "
     "and Iain M. Banks wrote elsewhere, and the U.S. Route 52 runs past Wheaton. Scrooge met the Ghost of "
     "Christmas Past. AC/DC played TCP/IP songs about I/O.\n\nScrooge and Bob Cratchit worked late in New York. "
     "New York City slept. "
     "West Ham played at home. The west wind blew, the west door shut, and fans of West Ham sang."),
    ("runbook.md",
     "# billing-service incidents\n\nOn March 14 the billing-service returned HTTP 504 to the api-gateway. "
     "PostgreSQL had reached max_connections (set to 200); Priya Raman raised `db.pool.size` from 20 to 40 "
     "and restarted `ledger-worker` on v2.4.1. Errors ERR_CONN_RESET and E1234 followed; see "
     "/etc/postgresql/main.conf and https://example.org/runbook.\n\n- The search-api falls back to "
     "Elasticsearch.\n- Kafka consumers lag on ledger.events.\n- The retry flag enables backoff and enables "
     "jitter.\n"),
    ("page.md",
     "---\ntitle: Request handling\n---\n\n# Request handling { #requests .big }\n\n!!! note \"Heads up\"\n"
     "    The <dfn title=\"Asynchronous Server Gateway Interface\">ASGI</dfn> server calls the app. Press "
     "<kbd>Ctrl</kbd>+<kbd>C</kbd> to stop. <!-- a comment -->\n\n=== \"Python\"\n\n    Use `g`reater "
     "values.\n\nThe Dispatcher is the core API used to dispatch requests. Its password hash is "
     "`CYaIb8sB$P4uod1`, an example value. See [`Dispatcher`][api.Dispatcher] and [`Response`][], and read "
     "[the guide]({{< relref \"guide#retries\" >}}).\n\n"
     "/// note | Retries\n    type: info\n\nThe Dispatcher retries a request once.\n///\n\n"
     "<figure markdown=\"span\">\n  ![The Dispatcher](img/d.png){ width=\"500\" }\n  <figcaption>The [Dispatcher]"
     "(api.md) at work</figcaption>\n</figure>\n\n"
     "```python\ndef handler(request):\n    return Response(\"ok\")\n"
     "```\n\n## Main Server Options\n\n| setting | default | meaning |\n|---|---|---|\n"
     "| `timeout` | 30 | seconds a request may take |\n"
     "| `upstream` | Retry | Main server the request goes to |\n| `retry.`<br/>`attempts` | 3 | tries per request |\n"
     "| `mesh` | off | Enable Consul Connect to enable mesh routing |\n"
     "| `trace` | off | Enables Jaeger Tracing for the mesh |\n| `spans` | on | Enables span export |\n"
     "| `delay` | 0 | (Deprecated) Defines the delay before a retry |\n| `grace` | 5 | Defines the grace period |\n"
     "\n## Restart the Workers Alongside ASGI\n\nPlease Tell Us How It Went\n\nThe workers restart the server.\n\n"
     "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, AS THE DISPATCHER SAYS.\n"),
    ("guides/rate_limits.md",
     "Requests above the limit receive HTTP 429 and a Retry-After header.\n"),
    ("zh.txt",
     "调度器负责把任务分配给工作节点。调度器每五分钟运行一次。工作节点向调度器报告状态。职业碗防守截锋卡万·肖特以"
     "11分领先于全队。齿轮把动力传给车轮。齿轮磨损后需要更换。在歐洲，梵語的學術研究，由德國學者陸特和漢斯雷頓開創。2006年，Internet2正式退役Abilene网络。"
     "1982年，米格尔·德·拉·马德里当选总统。1961年，约翰·F·肯尼迪就任总统。第四十九届超级碗在亚利桑那举行。野马队赢得了超级碗。"),
    ("rows.jsonl",
     '{"_id": "seven-years", "title": "Seven Years War", "text": "Sometimes the war is called the French and '
     'Indian War, after the two enemies of the British."}\n'
     '{"_id": "midway", "title": "Midway, Floyd County, Iowa", "text": "Midway is an unincorporated community."}\n'
     '{"_id": "obrien", "title": "Conan O\'Brien", "text": "\\"O\'Brien\\" hosted the show."}'),
    ("pl.txt",
     "Jan Kowalski kieruje zespołem w Warszawie, np. w biurze przy ul. Marszałkowskiej. Biuro z Warszawy "
     "przeniesiono w 2016 r. do Krakowa. Stolicą Polski jest Warszawa. W Krakowie mieszka Jan Kowalski. "
     "Mówił wtedy „Kiedy wrócę, zadzwonię” i wyszedł, a statek „Batory” odpłynął. W 1963 rząd Harolda "
     "Macmillana upadł."),
    ("zh-more.txt", "工程师检查了调度器。"),
)
