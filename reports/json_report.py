"""The JSON report: a Document's data, whose schema is documented where the Document is built (the run
report's in casstrace.reports.run, the comparison's, sweep's and watch's in their modules)."""

import json

from casstrace.reports.document import Document
from casstrace.reports.formats import ReportOptions
from casstrace.terminal import json_printable


class Json:
    suffix = ".json"
    writes_a_file = False  # standard output without --output

    def render(self, document: Document, options: ReportOptions) -> str:
        return json_printable(json.dumps(document.data, indent=2, ensure_ascii=False)) + "\n"


RENDERER = Json()
