"""Options given at most once: the same option twice on a command line is an error, not a silent choice."""
from __future__ import annotations

import click


class GivenOnce(click.Option):
    """An option that refuses to be given twice, where click would keep the last value without a word.

    Its parser keeps every occurrence, as click's parser does for a repeatable option, and
    :meth:`consume_value` refuses more than one.  Options meant to repeat (``multiple=True``, counts)
    are parsed as click parses them.
    """

    def add_to_parser(self, parser, ctx):
        if self.multiple or self.count:
            return super().add_to_parser(parser, ctx)
        self.multiple = True  # the parser's action becomes "append" ("append_const" for a flag)
        try:
            super().add_to_parser(parser, ctx)
        finally:
            self.multiple = False

    def consume_value(self, ctx, opts):
        given = opts.get(self.name)
        if self.multiple or self.count or not isinstance(given, list):
            return super().consume_value(ctx, opts)
        if len(given) > 1:
            times = "twice" if len(given) == 2 else f"{len(given)} times"
            texts = [self._as_typed(value) for value in given]
            raise click.BadOptionUsage(self.name, f"{'/'.join(self.opts + self.secondary_opts)} given {times} "
                                                  f"({', '.join(texts[:-1])} and {texts[-1]}); give it once", ctx)
        return super().consume_value(ctx, {**opts, self.name: given[0]})

    def _as_typed(self, value) -> str:
        """One occurrence as the user typed it: a flag's name, or the value's text."""
        if self.is_flag:
            return self.secondary_opts[0] if value is False and self.secondary_opts else self.opts[0]
        return " ".join(value) if isinstance(value, tuple) else value


def option(*names, **settings):
    """``click.option`` for this command line: giving the option twice is an error (:class:`GivenOnce`)."""
    return click.option(*names, cls=GivenOnce, **settings)
