package models

// DownloadsToBegin decides how many of the asset downloads waiting on a
// cell begin now, under the board's max_asset_downloads_per_cell (limit;
// 0: no limit), with active downloads under way. The waiting ones begin
// in the order they asked, first in first out, so none waits behind a
// download that asked later. A download is one checksum fetched into the
// cell's asset cache: starts that find the asset cached, or that wait for
// another start's download of the same checksum, take no slot. The board
// hands the limit to its reps in every registration answer
// (RegisterCellResponse.max_asset_downloads), so a change reaches every
// cell within a heartbeat; downloads under way when it is lowered finish.
//
// Worked example, limit 2:
//  1. Three starts need three different assets: two downloads begin, the
//     third waits (2 active, 1 waiting: 0 begin).
//  2. One finishes (1 active, 1 waiting): the third begins.
//  3. The limit is lowered to 1 while 2 are active and 3 wait: none
//     begins until both have finished; then one, then the next.
//  4. Limit 0: every waiting download begins at once.
func DownloadsToBegin(limit, active, waiting int32) int32 {
	if waiting <= 0 {
		return 0
	}
	if limit <= 0 {
		return waiting
	}
	return min(max(limit-active, 0), waiting)
}
