! Fortran MPI_COMM_SPAWN (mpif.h, 2 ranks start 1 child of this program with argument
! "child"): the wrapper must pass the hidden lengths of the CHARACTER arguments (command, argv)
! on to the MPI library, or the child is started from a garbled command line. The parents
! check the child's answer; the child writes no expectations (its world has a profile of its
! own, in spawned-*/).
program f_spawn
  use invmw_expect
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, parent, inter, x, errcodes(1)
  character(len=512) :: cmd
  character(len=16) :: args(2)

  call MPI_INIT(ierr)
  call ex_call('MPI_Init', 0, 0)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_GET_PARENT(parent, ierr)
  if (parent == MPI_COMM_NULL) then
    call get_command_argument(0, cmd)
    args(1) = 'child'
    args(2) = ' '
    call MPI_COMM_SPAWN(trim(cmd), args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, &
                        errcodes, ierr)
    call ex_call('MPI_Comm_spawn', 0, 0)
    if (ierr /= MPI_SUCCESS .or. errcodes(1) /= MPI_SUCCESS) stop 4
    if (rank == 0) then
      call MPI_RECV(x, 1, MPI_INTEGER, 0, 5, inter, MPI_STATUS_IGNORE, ierr)
      call ex_call('MPI_Recv', 0, 4)
      if (x /= 42) stop 5
    end if
    call MPI_COMM_DISCONNECT(inter, ierr)
    call ex_call('MPI_Comm_disconnect', 0, 0)
    call ex_call('MPI_Finalize', 0, 0)
    call ex_write(rank)
    if (rank == 0) print '(a)', 'f_spawn: ok'
  else
    call get_command_argument(1, cmd)
    if (trim(cmd) /= 'child') stop 6
    x = 42
    call MPI_SEND(x, 1, MPI_INTEGER, 0, 5, parent, ierr)
    call MPI_COMM_DISCONNECT(parent, ierr)
  end if
  call MPI_FINALIZE(ierr)
end program f_spawn
