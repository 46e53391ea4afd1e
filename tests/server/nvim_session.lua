-- A scripted Neovim session against `prefixlint server` (tests/heavy/server.rs runs it headless).
-- Works with Neovim 0.7 (Debian bookworm): vim.lsp.start_client + buf_attach_client.
-- Env: PL_BIN (the binary), PL_ROOT (workspace), PL_FILE (the file opened), and either
-- - PL_FIXED: PL_FILE is a timestamp-first template, PL_FIXED a file with what
--   `check --fix --unsafe-fixes` writes for it; the session sees the finding on line 1,
--   clears it with unsaved edits and undoes them, hovers, and applies the code actions; or
-- - PL_LINE: PL_FILE is a host file (a YAML agent config, a Python module, a `.prompty`) whose
--   embedded template's finding is at the host's line PL_LINE; an unsaved edit that moves that
--   line down clears it, or, with PL_FIXED too, the move code action gives the text
--   `check --fix --unsafe-fixes` writes (the same code makes and verifies both).
local bin, root, file = os.getenv("PL_BIN"), os.getenv("PL_ROOT"), os.getenv("PL_FILE")
local fixed_file = os.getenv("PL_FIXED")
local host_line = tonumber(os.getenv("PL_LINE") or "")
local TIMEOUT = 60000

local function say(line)
  io.stdout:write(line .. "\n")
end

local function fail(message)
  io.stderr:write("FAIL: " .. message .. "\n")
  vim.cmd("cquit 1")
end

local function stop(client_id)
  vim.lsp.stop_client(client_id)
  vim.wait(5000, function()
    return vim.lsp.get_client_by_id(client_id) == nil
  end, 20)
end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = "prefixlint",
    cmd = { bin, "server" },
    root_dir = root,
    init_options = { debounceMs = 50 },
  })
  if not client_id then
    return fail("the client did not start")
  end
  vim.lsp.buf_attach_client(buf, client_id)
  local client = vim.lsp.get_client_by_id(client_id)

  local function pl001()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == "PL001" then
        return d
      end
    end
  end
  local function wait_for(what, predicate)
    if not vim.wait(TIMEOUT, predicate, 20) then
      fail(what .. "; diagnostics: " .. vim.inspect(vim.diagnostic.get(buf)))
    end
  end

  -- Asks for the code actions on `line` (1-based), prints their titles, applies the move of
  -- that line, and checks it gives the text `check --fix --unsafe-fixes` wrote to PL_FIXED.
  -- Returns the actions; a failure raises, and the pcall around the session fails it.
  local function apply_move_action(line)
    vim.api.nvim_win_set_cursor(0, { line, 0 })
    local params = vim.lsp.util.make_range_params()
    params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(buf) }
    local response = client.request_sync("textDocument/codeAction", params, TIMEOUT, buf)
    if not response or response.err then
      error("code actions failed: " .. vim.inspect(response))
    end
    local move
    for _, action in ipairs(response.result or {}) do
      say("action: " .. action.title)
      if action.title:find("Move line " .. line .. " ", 1, true) then
        move = action
      end
    end
    if not move then
      error("no move action")
    end
    vim.lsp.util.apply_workspace_edit(move.edit, client.offset_encoding)
    local expected = table.concat(vim.fn.readfile(fixed_file), "\n")
    local now = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    if now ~= expected then
      error("the move action's text differs from check --fix's:\n" .. now .. "\n---\n" .. expected)
    end
    wait_for("PL001 cleared by the move action", function()
      return pl001() == nil
    end)
    say("after the move action: no PL001, the text check --fix writes")
    return response.result
  end

  if host_line then
    wait_for("PL001 on the host line", function()
      local d = pl001()
      return d ~= nil and d.lnum == host_line - 1
    end)
    local d = pl001()
    say("diagnostic: " .. d.code .. " line " .. (d.lnum + 1) .. " column " .. (d.col + 1) .. ": " .. vim.split(d.message, "\n")[1])
    if fixed_file then
      apply_move_action(host_line)
      return stop(client_id)
    end

    -- Move the volatile line after the instructions (unsaved): the finding goes.
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local volatile = table.remove(lines, host_line)
    table.insert(lines, host_line + 1, volatile)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    wait_for("PL001 cleared after the move", function()
      return pl001() == nil
    end)
    say("after moving the line down: no PL001")
    return stop(client_id)
  end

  -- 1. The timestamp on line 1 is reported there.
  wait_for("PL001 on line 1", function()
    local d = pl001()
    return d ~= nil and d.lnum == 0
  end)
  local d = pl001()
  say("diagnostic: " .. d.code .. " line " .. (d.lnum + 1) .. ": " .. vim.split(d.message, "\n")[1])

  -- 2. Moving the line to the end (unsaved edit) clears it.
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local first = table.remove(lines, 1)
  table.insert(lines, first)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  wait_for("PL001 cleared after the move", function()
    return pl001() == nil
  end)
  say("after moving line 1 to the end: no PL001")

  -- Undo the move: the finding comes back.
  vim.cmd("silent undo")
  wait_for("PL001 back after undo", function()
    return pl001() ~= nil
  end)
  say("after undo: PL001 again")

  -- 3. Hover on the expression, code actions on its line, apply the suppression.
  local line1 = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
  local column = line1:find("{{", 1, true) + 2
  vim.api.nvim_win_set_cursor(0, { 1, column })
  local hover = client.request_sync("textDocument/hover", vim.lsp.util.make_position_params(), TIMEOUT, buf)
  if not hover or hover.err or not hover.result then
    return fail("no hover: " .. vim.inspect(hover))
  end
  local text = hover.result.contents.value
  for _, wanted in ipairs({ "tokens come before it", "differs", "cacheable" }) do
    if not text:find(wanted, 1, true) then
      return fail("hover lacks `" .. wanted .. "`: " .. text)
    end
  end
  say("hover: " .. vim.split(text, "\n")[3])

  -- 4. The move, applied as a code action, is the fix `check --fix --unsafe-fixes` writes.
  local actions = apply_move_action(1)
  local suppress
  for _, action in ipairs(actions) do
    if action.title:find("ignore[PL001]", 1, true) then
      suppress = action
    end
  end
  if not suppress then
    return fail("no suppression action")
  end
  vim.cmd("silent undo")
  wait_for("PL001 back after undoing the action", function()
    return pl001() ~= nil
  end)
  vim.lsp.util.apply_workspace_edit(suppress.edit, client.offset_encoding)
  local edited = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
  if not edited:find("{# prefixlint: ignore[PL001] ", 1, true) then
    return fail("the suppression was not inserted: " .. edited)
  end
  say("line 1 now: " .. edited)
  wait_for("PL001 suppressed", function()
    return pl001() == nil
  end)
  say("after the suppression: no PL001")
  stop(client_id)
end)
if not ok then
  fail(tostring(err))
end
vim.cmd("qall!")
