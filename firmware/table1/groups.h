/*
 * groups.h — the measured GROUPs of groups.S (FORMAT.md §4). They are not C functions: pin_frame (timing.h) runs
 * them with the measurement mask in r18 and their argument in X, right after a frame header.
 */
#ifndef PINTIME_GROUPS_H
#define PINTIME_GROUPS_H

void group_direct(void);
void group_executing_10(void);
void group_executing_20(void);
void group_executing_55(void);
void group_executing_100(void);
void group_executing_210(void);
void group_differential(void);	/* X = pairs */
void group_line_10(void);
void group_line_20(void);
void group_overdet_20(void);

#endif
