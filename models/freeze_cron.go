package models

import (
	"fmt"
	"strconv"
	"strings"
)

// CronSchedule is a parsed freeze schedule: five fields "minute hour
// day-of-month month day-of-week", each a set of allowed values.
//
// Each field is a comma-separated list of items; an item is "*" (every
// value), a number, a range "a-b" (a ≤ b), or either of "*" and a range
// followed by a step "/n" (every n-th value from the range's start).
// Ranges: minute 0-59, hour 0-23, day-of-month 1-31, month 1-12,
// day-of-week 0-7 where 0 and 7 are both Sunday. Names (MON, JAN) and the
// other extensions of some crons (L, W, #, ?) are refused.
//
// A day matches as in the classic cron: when day-of-month and
// day-of-week are both restricted (neither is a bare "*"), a day matching
// either matches; otherwise a day must match both.
//
// Worked examples:
//  1. "30 2 * * *"     every day at 02:30.
//  2. "0 22 * * 5"     Fridays at 22:00.
//  3. "*/15 9-17 * * 1-5" every quarter hour from 09:00 to 17:45, Monday
//     to Friday.
//  4. "0 0 1,15 * 0"   the 1st and the 15th of every month, and every
//     Sunday, at midnight (both day fields restricted: either matches).
//  5. "0 0 * 12 */2"   midnight on the Sundays, Tuesdays, Thursdays and
//     Saturdays of December (*/2 over 0-7 is 0,2,4,6).
type CronSchedule struct {
	minute, hour, dom, month, dow uint64
	// domAll and dowAll: the field was a bare "*".
	domAll, dowAll bool
}

type cronField struct {
	name     string
	min, max int
}

var cronFields = [5]cronField{
	{"minute", 0, 59}, {"hour", 0, 23}, {"day-of-month", 1, 31}, {"month", 1, 12}, {"day-of-week", 0, 7},
}

// ParseCron parses spec, the five-field schedule of a freeze window. Its
// error says which field is wrong and why, for the caller to put after
// the field's path.
func ParseCron(spec string) (CronSchedule, error) {
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return CronSchedule{}, fmt.Errorf("must have 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	var sets [5]uint64
	for i, text := range fields {
		set, err := parseCronField(text, cronFields[i])
		if err != nil {
			return CronSchedule{}, fmt.Errorf("%s field %s: %v", cronFields[i].name, strconv.Quote(text), err)
		}
		sets[i] = set
	}
	// Sunday is 0 and 7: keep it as 0 only.
	if sets[4]&(1<<7) != 0 {
		sets[4] = sets[4]&^(1<<7) | 1
	}
	return CronSchedule{
		minute: sets[0], hour: sets[1], dom: sets[2], month: sets[3], dow: sets[4],
		domAll: fields[2] == "*", dowAll: fields[4] == "*",
	}, nil
}

func parseCronField(text string, f cronField) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(text, ",") {
		lo, hi, step := 0, 0, 1
		rangePart, stepPart, hasStep := strings.Cut(item, "/")
		if hasStep {
			n, err := cronNumber(stepPart)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("step %s must be a whole number of at least 1", strconv.Quote(stepPart))
			}
			step = n
		}
		switch {
		case rangePart == "*":
			lo, hi = f.min, f.max
		case strings.Contains(rangePart, "-"):
			a, b, _ := strings.Cut(rangePart, "-")
			var errA, errB error
			lo, errA = cronNumber(a)
			hi, errB = cronNumber(b)
			if errA != nil || errB != nil {
				return 0, fmt.Errorf("range %s must be two numbers a-b", strconv.Quote(rangePart))
			}
			if lo > hi {
				return 0, fmt.Errorf("range %s must not run backwards", strconv.Quote(rangePart))
			}
		default:
			if hasStep {
				return 0, fmt.Errorf("a step needs * or a range before it, got %s", strconv.Quote(item))
			}
			n, err := cronNumber(rangePart)
			if err != nil {
				return 0, fmt.Errorf("%s is not *, a number, a range or a step", strconv.Quote(item))
			}
			lo, hi = n, n
		}
		if lo < f.min || hi > f.max {
			return 0, fmt.Errorf("%s is outside %d-%d", strconv.Quote(item), f.min, f.max)
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// cronNumber is a decimal number of at most two digits (every field's
// values are below 100).
func cronNumber(text string) (int, error) {
	if text == "" || len(text) > 2 || strings.Trim(text, "0123456789") != "" {
		return 0, fmt.Errorf("not a number")
	}
	return strconv.Atoi(text)
}

// matchesDay reports whether the schedule's day fields allow a day of
// month dom (1-31) in month (1-12) that is weekday dow (0 = Sunday).
func (c CronSchedule) matchesDay(dom, month, dow int) bool {
	if c.month&(1<<month) == 0 {
		return false
	}
	domOK, dowOK := c.dom&(1<<dom) != 0, c.dow&(1<<dow) != 0
	if !c.domAll && !c.dowAll {
		return domOK || dowOK
	}
	return domOK && dowOK
}
