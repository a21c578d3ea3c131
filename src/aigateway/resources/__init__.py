"""Resources: the groups of endpoints a client exposes (chat, models, ...)."""
