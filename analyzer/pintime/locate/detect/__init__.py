"""Edge detection: where a channel's steps are, their sign, and which are too close; block by block with the
threshold following the recording's level."""
