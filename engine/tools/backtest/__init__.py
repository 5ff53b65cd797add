"""Backtests: the whole engine (parser, books, features, Laya, the desk, the risk gateway, the
executor, a journal, the paper venue) on recordings, in their market time, at full speed; and
what its trading made: PnL, activity, markouts, what each quote gate saved or cost."""
