! Test-side bookkeeping for the Fortran end-to-end tests (no MPI inside, so one source serves
! the mpif.h, `use mpi` and `use mpi_f08` programs). Same file format as expect.h:
! $INVMW_TEST_EXPECT_DIR/expected-rank<N>.json with calls, bytes_sent, bytes_recv per function.
module invmw_expect
  implicit none
  private
  public :: ex_call, ex_add, ex_write
  integer, parameter :: i8 = selected_int_kind(18)
  integer, parameter :: maxf = 64
  character(len=48) :: names(maxf)
  integer(i8) :: calls(maxf) = 0, sent(maxf) = 0, recvd(maxf) = 0
  integer :: nf = 0
contains
  subroutine ex_add(name, ncalls, nsent, nrecv)
    character(len=*), intent(in) :: name
    integer(i8), intent(in) :: ncalls, nsent, nrecv
    integer :: i
    do i = 1, nf
      if (trim(names(i)) == name) exit
    end do
    if (i > nf) then
      nf = nf + 1
      i = nf
      names(i) = name
    end if
    calls(i) = calls(i) + ncalls
    sent(i) = sent(i) + nsent
    recvd(i) = recvd(i) + nrecv
  end subroutine ex_add

  ! One call moving nsent / nrecv bytes (default integers are enough for these tests).
  subroutine ex_call(name, nsent, nrecv)
    character(len=*), intent(in) :: name
    integer, intent(in) :: nsent, nrecv
    call ex_add(name, 1_i8, int(nsent, i8), int(nrecv, i8))
  end subroutine ex_call

  subroutine ex_write(rank)
    integer, intent(in) :: rank
    character(len=4096) :: dir
    character(len=4200) :: path, tmp
    integer :: i, u, stat
    call get_environment_variable('INVMW_TEST_EXPECT_DIR', dir, status=stat)
    if (stat /= 0 .or. len_trim(dir) == 0) return
    write (path, '(a,a,i0,a)') trim(dir), '/expected-rank', rank, '.json'
    write (tmp, '(a,a)') trim(path), '.tmp'
    open (newunit=u, file=trim(tmp), status='replace', action='write')
    write (u, '(a,i0,a)') '{"rank": ', rank, ', "functions": {'
    do i = 1, nf
      write (u, '(a,a,a,i0,a,i0,a,i0,a)', advance='no') '  "', trim(names(i)), '": {"calls": ', &
        calls(i), ', "bytes_sent": ', sent(i), ', "bytes_recv": ', recvd(i), '}'
      if (i < nf) then
        write (u, '(a)') ','
      else
        write (u, '(a)') ''
      end if
    end do
    write (u, '(a)') '}}'
    close (u)
    call rename(trim(tmp), trim(path))
  end subroutine ex_write
end module invmw_expect
