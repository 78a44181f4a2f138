"""Edge locators: an edge's time from the samples around it (threshold, inflection, count, centroid, the
template fit alone and jointly), and the simple methods' error on the calibration train."""
