"""The card's AC coupling learned from the capture (its poles, its zero away from DC) and undone."""
