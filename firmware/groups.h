/* groups.h — the measured GROUPs of groups.S (FORMAT.md §4); each leaves the measurement pin low. */
#ifndef PINTIME_GROUPS_H
#define PINTIME_GROUPS_H

#include <stdint.h>

void group_direct(void);
void group_executing_10(void);
void group_executing_20(void);
void group_executing_55(void);
void group_executing_100(void);
void group_executing_210(void);
void group_differential(uint16_t pairs);
void group_line_10(void);
void group_line_20(void);
void group_overdet_20(void);

#endif
