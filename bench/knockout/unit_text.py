"""bench/knockout/unit_text.py: a generated unit's text rewritten by exact patterns (groups2.py, sentinel.py). Each
replacement asserts how often its pattern occurs, so a pattern the emitted unit no longer holds stops the rewrite."""


class Unit:
    def __init__(self, path):
        self.src = open(path).read()

    def rep(self, old, new, cnt=1):
        """Replaces old, which must occur cnt times, by new."""
        assert self.src.count(old) == cnt, (old[:90], self.src.count(old))
        self.src = self.src.replace(old, new)

    def save(self, path):
        open(path, 'w').write(self.src)
