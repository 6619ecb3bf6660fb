"""sphinx-gallery image scraper for figures made without pyplot.

mixlinreg draws on :class:`matplotlib.figure.Figure` objects that pyplot does not manage (so
library code never leaks figures), which the built-in matplotlib scraper cannot see. This scraper
saves every Figure bound to a name of the example that it has not saved yet, after each code block.
"""

from matplotlib.figure import Figure

_SEEN_KEY = "__mixlinreg_scraped__"


def figure_scraper(block, block_vars, gallery_conf):
    from sphinx_gallery.scrapers import figure_rst

    names = block_vars["example_globals"]
    seen = names.setdefault(_SEEN_KEY, set())
    paths = []
    for value in list(names.values()):
        if isinstance(value, Figure) and id(value) not in seen:
            seen.add(id(value))
            path = next(block_vars["image_path_iterator"])
            value.savefig(path, dpi=90)
            paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])
