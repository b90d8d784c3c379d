"""Load: the paper records, the seed abstracts merged into them, the OpenReview fetch."""
