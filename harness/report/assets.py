"""The page's files: Jinja2 templates (templates/) and the CSS/JS (static/), read with
importlib.resources and inlined, so that a report stays one file that opens offline."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

from markupsafe import Markup


def static(name: str) -> str:
    """The text of static/NAME (CSS or JS shipped with the package)."""
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def _env():
    import jinja2
    return jinja2.Environment(loader=jinja2.PackageLoader(__package__, "templates"),
                              autoescape=True, keep_trailing_newline=True,
                              undefined=jinja2.StrictUndefined)


def render(template: str, **values) -> str:
    """templates/TEMPLATE with VALUES; text is escaped unless passed as Markup."""
    return _env().get_template(template).render(**values)


def render_page(title: str, body_html: str) -> str:
    return render("page.html.j2", title=title, css=Markup(static("report.css")),
                  body=Markup(body_html))


def render_widget(**values) -> str:
    return render("widget.html.j2", js=Markup(static("widget.js")),
                  **{k: Markup(v) if isinstance(v, str) else v for k, v in values.items()})
