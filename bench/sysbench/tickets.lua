-- sysbench ticket workload: one event = the Flickr recipe, REPLACE INTO <table> (stub) VALUES ('a')
-- then SELECT LAST_INSERT_ID(). In text mode every ticket is checked against the one before it on
-- the same connection (must increase) and, with --verify-file, appended to a file for a
-- uniqueness check.
--   --mode=text|prepared|floor|nextval|nextval_prepared
--     floor: SELECT 1 + SELECT LAST_INSERT_ID() (protocol cost only)
--     nextval, nextval_prepared: one round trip per ticket, SELECT NEXTVAL(<table>)
--   --table=Tickets64
sysbench.cmdline.options = {
  mode = {"text, prepared, floor, nextval or nextval_prepared", "text"},
  table = {"ticket table", "Tickets64"},
  verify_file = {"append every ticket to FILE.<thread> for a uniqueness check", ""},
}

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  last = 0
  if sysbench.opt.mode == "prepared" then
    replace = con:prepare("REPLACE INTO " .. sysbench.opt.table .. " (stub) VALUES (?)")
    stub = replace:bind_create(sysbench.sql.type.CHAR, 1)
    replace:bind_param(stub)
    stub:set("a")
    lastid = con:prepare("SELECT LAST_INSERT_ID()")
  elseif sysbench.opt.mode == "nextval_prepared" then
    nextval = con:prepare("SELECT NEXTVAL(" .. sysbench.opt.table .. ")")
  end
  if sysbench.opt.verify_file ~= "" then
    out = io.open(sysbench.opt.verify_file .. "." .. sysbench.tid, "w")
  end
end

local function check(rs)
  local id = tonumber(rs:fetch_row()[1])
  if id == nil or id <= last then
    error(string.format("ticket %s after %d on thread %d", tostring(id), last, sysbench.tid))
  end
  last = id
  if out then out:write(id, "\n") end
end

function event()
  local mode = sysbench.opt.mode
  if mode == "prepared" then
    -- sysbench cannot fetch the row of a prepared SELECT (it reports nrows only), so the value
    -- check runs in text mode; here the reply must still be exactly one row.
    replace:execute()
    local rs = lastid:execute()
    if rs == nil or rs.nrows ~= 1 then error("SELECT LAST_INSERT_ID() did not return one row") end
  elseif mode == "nextval" then
    check(con:query("SELECT NEXTVAL(" .. sysbench.opt.table .. ")"))
  elseif mode == "nextval_prepared" then
    local rs = nextval:execute()
    if rs == nil or rs.nrows ~= 1 then error("SELECT NEXTVAL() did not return one row") end
  elseif mode == "floor" then
    con:query("SELECT 1")
    con:query("SELECT LAST_INSERT_ID()")
  else
    con:query("REPLACE INTO " .. sysbench.opt.table .. " (stub) VALUES ('a')")
    check(con:query("SELECT LAST_INSERT_ID()"))
  end
end

function thread_done()
  if out then out:close() end
  con:disconnect()
end
