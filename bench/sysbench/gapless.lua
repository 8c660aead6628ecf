-- sysbench gapless workload: one event = one number taken inside a transaction and committed.
--   --target=ticketd  BEGIN; SELECT NEXTVAL(<table>); COMMIT   (a gapless sequence)
--   --target=mariadb  BEGIN; SELECT value FROM <table> WHERE name='inv' FOR UPDATE;
--                     UPDATE <table> SET value = value + 1 WHERE name='inv'; COMMIT
--                     (the usual gapless recipe: one counter row, locked until COMMIT)
-- Every number is checked to increase on its connection; relaxed ticketd order may commit a
-- lower number later only after a rollback, and this workload never rolls back.
sysbench.cmdline.options = {
  target = {"ticketd or mariadb", "ticketd"},
  table = {"gapless sequence (ticketd) or counter table (mariadb)", "Invoices"},
}

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  last = 0
end

local function check(rs)
  local id = tonumber(rs:fetch_row()[1])
  if id == nil or id <= last then
    error(string.format("number %s after %d on thread %d", tostring(id), last, sysbench.tid))
  end
  last = id
end

function event()
  con:query("BEGIN")
  if sysbench.opt.target == "mariadb" then
    check(con:query("SELECT value FROM " .. sysbench.opt.table .. " WHERE name='inv' FOR UPDATE"))
    con:query("UPDATE " .. sysbench.opt.table .. " SET value = value + 1 WHERE name='inv'")
  else
    check(con:query("SELECT NEXTVAL(" .. sysbench.opt.table .. ")"))
  end
  con:query("COMMIT")
end

function thread_done()
  con:disconnect()
end
